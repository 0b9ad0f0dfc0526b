topo tests/data/sweep/dgx-b300-2node.yaml
