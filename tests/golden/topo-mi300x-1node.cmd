topo scenarios/mi300x-1node.yaml
