"""`python -m kafka_trial` is the `kafka-trial` command."""

import sys

from kafka_trial.harness.cli import main

sys.exit(main())
