"""Never finishes: a loop at import time."""

while True:
    pass
