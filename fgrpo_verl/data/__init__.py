"""verl parquet data: preparation from public data sets (:mod:`.prepare`) and row checks (:mod:`.check`)."""
