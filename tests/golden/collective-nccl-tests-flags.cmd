collective scenarios/h100-2x8-200g.yaml --op reduce_scatter_perf -b 64M -e 64M -d all -o all -g 8 -t 2 -n 50 -w 5 --algo ^PAT --protocol LL128,Simple
