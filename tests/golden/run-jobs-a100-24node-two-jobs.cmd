run tests/data/jobs/a100-24node-2to1-two-jobs.yaml
