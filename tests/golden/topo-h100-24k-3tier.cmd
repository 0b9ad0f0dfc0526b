topo scenarios/h100-24k-3tier.yaml
