"""Authentication for SASL listeners (issue #13): the JAAS parser, the SASL mechanisms
(sans-IO), SCRAM credentials, and the per-connection state machine the server consults."""
