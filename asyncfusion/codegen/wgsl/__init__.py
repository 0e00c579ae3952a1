"""WGSL from the kernel IR: lowerings of the ops, the math libraries, kernel rendering."""
