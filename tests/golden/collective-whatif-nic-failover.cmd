collective tests/data/what-if/dgx-h100-2node-nic-failover.yaml --op allreduce -b 1M -e 1G -f 32
