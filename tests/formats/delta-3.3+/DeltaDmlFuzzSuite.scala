package sparkbloom.formats.delta

import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.formats.DmlFuzz

/**
 * The random DML fuzz ([[sparkbloom.formats.DmlFuzz]]) on Delta tables: plain, and with deletion vectors and column
 * mapping; MERGE, UPDATE and DELETE by run-time keys and by literals, INSERTs and OPTIMIZE, each compared with the
 * same statement on an unindexed twin with sparkbloom off.
 */
class DeltaDmlFuzzSuite extends AnyFunSuite with DeltaSpark with DmlFuzz {
  override protected def formatConf(warehouse: String): Map[String, String] = super.formatConf(warehouse) ++ Map(
    "spark.databricks.delta.optimize.maxFileSize" -> "4096", // OPTIMIZE leaves small files: some left to skip
    "spark.sparkbloom.runtimePruning.minTableSize" -> "0")

  override protected def variants: Seq[String] = Seq("plain", "deletion vectors and column mapping")
  override protected def tableName(base: String): String = base
  override protected def createTable(t: String, variant: String): Unit = {
    val props = if (variant == "plain") "'delta.enableDeletionVectors' = 'false'"
    else "'delta.enableDeletionVectors' = 'true', 'delta.columnMapping.mode' = 'name'"
    sql(s"CREATE TABLE $t (id BIGINT, k STRING, n BIGINT, v BIGINT) USING delta TBLPROPERTIES ($props)")
  }
  override protected def compaction(t: String): String = s"OPTIMIZE $t"
  override protected def commits(t: String): (Long, Map[String, String]) = withIndexEnabled(on = false) {
    val history = sql(s"DESCRIBE HISTORY $t").select("version", "operationMetrics").collect()
    val last = history.maxBy(_.getLong(0))
    (history.length.toLong, last.getAs[scala.collection.Map[String, String]](1).toMap)
  }
  /**
   * The rows a statement read from its source and inserted, updated and deleted (MERGE's numTarget... and its
   * split by clause kind, UPDATE's and DELETE's own). Copied rows, MERGE's numOutputRows (which counts them) and
   * the files removed and deletion vectors written depend on the files holding the changed rows.
   */
  override protected def statementMetrics(all: Map[String, String]): Map[String, String] = all.filter {
    case (m, _) => m.contains("Rows") && !m.contains("Copied") && m != "numOutputRows"
  }
  override protected def layoutMetrics(all: Map[String, String]): Map[String, String] = all.filter { case (m, _) =>
    m.contains("Rows") && m.contains("Copied") || m == "numOutputRows" || m == "numRemovedFiles" ||
    m == "numTargetFilesRemoved" || m.contains("DeletionVectors")
  }
  override protected def defaultCases: Int = 2
  // OSS Delta has no subqueries in DELETE and UPDATE conditions: its users write the MERGE forms instead
  override protected def subqueryConditions: Boolean = false

  for ((variant, i) <- variants.zipWithIndex)
    test(s"random MERGE, UPDATE and DELETE on a Delta table ($variant) end as without sparkbloom") {
      dmlFuzz(variant, 20261127L + i)
    }
}
