collective scenarios/dgx-h100-1node.yaml --op allreduce -b 8 -e 1G -f 8
