"""The Locust side's work beside its requests: the answers taken in by the batch, journalled and
held to their headers (``answers``), and a worker's records shipped to its master (``shipping``).

May import: every room below it.
"""
