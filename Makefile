# The two commands a newcomer needs (see README.md): `make demo` and `make test`.
.PHONY: demo test stress bench

export XDG_RUNTIME_DIR ?= /tmp

demo:
	bash scripts/setup.sh
	.venv/bin/python examples/quickstart.py

test:
	bash scripts/setup.sh test
	ASYNCFUSION_DEBUG=1 .venv/bin/python -m pytest -q

stress:
	bash scripts/setup.sh test
	ASYNCFUSION_DEBUG=1 .venv/bin/python -m pytest -q -m stress tests/stress

bench:
	bash scripts/setup.sh
	.venv/bin/python bench/fusion_chain.py
