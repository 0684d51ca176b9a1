"""What every process of a load run agrees on: the rules (``rules``), the rate-limit headers
(``headers``), each process' journal of its operations (``journals``) and the prefix of the
variables that carry a run's settings (``env``).

May import: no room.
"""
