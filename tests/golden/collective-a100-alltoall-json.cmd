collective scenarios/dgx-a100-4node-rail.yaml --op alltoall -b 1M -e 64M -f 8 --format json
