"""kafka-trial: run, fault and judge a real Kafka cluster."""
