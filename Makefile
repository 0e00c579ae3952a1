# The two commands a newcomer needs (see README.md): `make demo` and `make test`.
# Also: `make docs` (the site, --strict), `make typecheck` (mypy --strict),
# `make sdist-check` (build the sdist, install it in a fresh venv, run its smoke tests).
.PHONY: demo test stress ray-test bench docs docs-serve typecheck sdist-check

demo:
	bash scripts/setup.sh
	.venv/bin/python examples/quickstart.py

test:
	bash scripts/setup.sh test
	ASYNCFUSION_DEBUG=1 .venv/bin/python -m pytest -q

stress:
	bash scripts/setup.sh test
	ASYNCFUSION_DEBUG=1 .venv/bin/python -m pytest -q -m stress tests/stress

ray-test:
	bash scripts/setup.sh test,ray
	ASYNCFUSION_DEBUG=1 .venv/bin/python -m pytest -q -m ray tests/test_ray_serve.py

bench:
	bash scripts/setup.sh
	.venv/bin/python bench/fusion_chain.py

docs:
	bash scripts/setup.sh docs
	NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs build --strict --site-dir site

docs-serve:
	bash scripts/setup.sh docs
	.venv/bin/python -m mkdocs serve

typecheck:
	bash scripts/setup.sh test
	.venv/bin/python -m mypy

sdist-check:
	bash scripts/sdist_check.sh
