run tests/data/jobs/h100x1-8node-2to1-best.yaml
