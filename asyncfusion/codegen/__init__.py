"""Code generation: kernel IR to shader text."""
