"""The system under test: the app (``app``) behind its rate-limit ``middleware``, its
``outbound`` sends and the ``sms_provider`` they reach; its instances as processes (``fleet``),
on clocks of their own when skewed (``clocks``); a service of the user's (``service``, each copy
under a ``guard``); the run's Redis and each rule's keys in it (``redis_of_run``).

May import: ``contract``.
"""
