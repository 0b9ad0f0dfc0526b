sweep tests/data/jobs/a100-24node-2to1-two-jobs.yaml --set jobs[0].placement=packed,spread,leaf
