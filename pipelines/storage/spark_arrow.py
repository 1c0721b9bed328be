"""Between Arrow and Spark: the type mapping of our tables' schemas, and Arrow tables as frames."""
from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T


def frame_of(spark: SparkSession, table: pa.Table) -> DataFrame:
    """An Arrow table as a Spark frame. In one chunk: PySpark 4.2's ``createDataFrame`` loses the
    rows after an empty chunk (a table concatenated from pieces, some empty, comes back short)."""
    return spark.createDataFrame(table.combine_chunks())


def arrow_type_to_spark(t: pa.DataType) -> T.DataType:
    """The Spark type Spark's parquet reader gives for an Arrow column type used by lakegraph."""
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return T.StringType()
    if pa.types.is_int64(t) or pa.types.is_uint64(t):
        return T.LongType()
    if pa.types.is_int32(t):
        return T.IntegerType()
    if pa.types.is_int8(t):
        return T.ByteType()
    if pa.types.is_boolean(t):
        return T.BooleanType()
    if pa.types.is_float64(t):
        return T.DoubleType()
    if pa.types.is_timestamp(t):
        return T.TimestampType()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return T.BinaryType()
    raise TypeError(f"no Spark type for Arrow type {t}")


def arrow_schema_to_spark(schema: pa.Schema) -> T.StructType:
    """A Spark StructType with the same column names, types and nullability."""
    return T.StructType([T.StructField(f.name, arrow_type_to_spark(f.type), f.nullable) for f in schema])
