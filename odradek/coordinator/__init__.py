"""Sans-IO coordinators (groups, transactions) driven by an injected clock."""
