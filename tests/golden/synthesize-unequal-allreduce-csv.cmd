synthesize tests/data/synthesis/unequal-4-6-gpus.yaml --op allreduce -b 10M -e 160M -f 4 --format csv
