"""One handler module per API (kfake-style): each starts with the versions it serves, how it
behaves, and what it does not implement yet. `odradek.broker.registry.HANDLERS` registers them."""
