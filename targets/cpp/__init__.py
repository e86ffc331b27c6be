"""C++ target: generated programs against runtime/ (see emit.py)."""
