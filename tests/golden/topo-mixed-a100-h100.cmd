topo scenarios/mixed-a100-h100.yaml
