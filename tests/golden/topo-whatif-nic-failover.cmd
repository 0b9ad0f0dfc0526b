topo tests/data/what-if/dgx-h100-2node-nic-failover.yaml
