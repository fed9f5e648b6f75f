package sparkbloom.formats.iceberg

import sparkbloom.formats.LakehouseSpark

/** A session with Iceberg's extension and a Hadoop catalog `ice` in the temporary warehouse. */
trait IcebergSpark extends LakehouseSpark {
  override protected def formatExtension: String = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
  override protected def formatConf(warehouse: String): Map[String, String] = Map(
    "spark.sql.catalog.ice" -> "org.apache.iceberg.spark.SparkCatalog",
    "spark.sql.catalog.ice.type" -> "hadoop",
    "spark.sql.catalog.ice.warehouse" -> (warehouse + "/ice"))
}
