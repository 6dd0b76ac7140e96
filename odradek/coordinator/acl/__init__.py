"""ACL bindings and the authorizer that decides with them (issue #13)."""
