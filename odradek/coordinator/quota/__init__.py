"""Client quotas (issue #13 point 4): the quota configs, Kafka's precedence of entity
matches, and the windowed rates and throttle times of Kafka's ClientQuotaManager."""
