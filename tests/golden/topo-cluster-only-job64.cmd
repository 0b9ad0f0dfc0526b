topo tests/data/jobs/a100-24node-2to1-job64.yaml
