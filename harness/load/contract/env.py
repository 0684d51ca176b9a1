"""The environment a run's settings reach its processes through."""

ENV = "HARNESS_LOAD_"  # the prefix of the variables that carry a run's settings to its processes
