collective scenarios/h100-2x8-200g.yaml --op allgather -b 1K -e 256M -f 16 --format csv
