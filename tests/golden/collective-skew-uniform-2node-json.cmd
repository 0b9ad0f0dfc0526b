collective scenarios/h100-2x8-200g.yaml --op allreduce -b 64M -e 64M --skew uniform:20us:7 --format json
