collective tests/data/what-if/hgx-h100-4gpu-nvlink-down.yaml --op allreduce -b 1G -e 1G --algo ring --dump-channels
