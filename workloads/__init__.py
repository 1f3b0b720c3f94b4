"""Client workloads: the only code that produces or consumes."""
