"""Listeners, TLS and SASL: how a connection comes to speak for a principal.

Authentication belongs to the connection (``KafkaConnection`` holds a ``Session``);
``listeners.py`` says what each listening socket speaks, ``tls.py`` builds its SSL
context, ``principal.py`` names a certificate's owner, ``authenticator.py`` runs the
SASL exchange before any other request is served, ``plain.py`` and ``scram.py`` are the
mechanisms, ``scram_store.py`` keeps SCRAM credentials.
"""
