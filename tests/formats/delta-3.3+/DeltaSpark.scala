package sparkbloom.formats.delta

import sparkbloom.formats.LakehouseSpark

/** A session with Delta's extension and catalog. */
trait DeltaSpark extends LakehouseSpark {
  override protected def formatExtension: String = "io.delta.sql.DeltaSparkSessionExtension"
  override protected def formatConf(warehouse: String): Map[String, String] =
    Map("spark.sql.catalog.spark_catalog" -> "org.apache.spark.sql.delta.catalog.DeltaCatalog",
      // Delta rebuilds table state with this many partitions (50 by default): 2 cores need few
      "spark.databricks.delta.snapshotPartitions" -> "2")
}
