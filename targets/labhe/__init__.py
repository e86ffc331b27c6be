"""The labeled-HE C++ target: a generated program embedding its labeled plan (runtime/labhe)."""
