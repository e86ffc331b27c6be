"""The tests are one package (`tests.passes`, `tests.targets`, ...), so that a test directory
never shadows the project package of the same name (`passes`, `targets`, `dsl`): without this
file pytest put tests/ first on sys.path, and a worktree's tests silently ran the editable
install's code."""
