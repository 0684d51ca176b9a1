"""The race explorer: instances on a scheduled wire, virtual clocks, nemeses, search and traces."""
