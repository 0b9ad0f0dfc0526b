collective scenarios/dgx-h100-1node.yaml --op allreduce -b 1M -e 256M -f 16 --algo ring --skew 3:50us
