collective tests/data/jobs/a100-24node-2to1-job64.yaml --op all_reduce -b 1M -e 16M -f 4
