topo scenarios/dgx-a100-4node-rail.yaml
