topo scenarios/dgx-h100-1node.yaml
