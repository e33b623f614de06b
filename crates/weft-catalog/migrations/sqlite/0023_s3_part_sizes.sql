-- The sizes of an object's parts when it was completed from a multipart upload, in order,
-- comma-separated: what a GET or HEAD with `partNumber` reads. NULL: one part, the whole.
ALTER TABLE s3_objects ADD COLUMN part_sizes TEXT;
