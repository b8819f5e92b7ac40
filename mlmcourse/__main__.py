import sys

# The course's commands need the course's environment (nbformat, nbgrader, torch...). Run from
# another Python they would fail on an import deep inside; say in one line which Python to use.
ENVIRONMENT = ("python -m mlmcourse needs the course's environment, and this Python lacks "
               "'{module}': in the course folder run `.venv/bin/python -m mlmcourse {args}` "
               "(`make check NB=your.ipynb` for the self-check; `make lab` creates .venv)")

try:
    from .cli import main

    status = main()
except ModuleNotFoundError as missing:
    if missing.name is None or missing.name.split(".")[0] == "mlmcourse":
        raise
    args = " ".join(sys.argv[1:]) or "COMMAND"
    print(ENVIRONMENT.format(module=missing.name, args=args), file=sys.stderr)
    status = 2
sys.exit(status)
