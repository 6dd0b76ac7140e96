"""The Python-hosted drivers: confluent-kafka, kafka-python, aiokafka and kcat."""
