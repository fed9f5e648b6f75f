package sparkbloom.write

import java.util.Locale

import scala.util.control.NonFatal

import org.apache.spark.SparkEnv
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomTaskMetric}
import org.apache.spark.sql.connector.write.{
  BatchWrite, DataWriter, DataWriterFactory, PhysicalWriteInfo, Write, WriterCommitMessage
}
import org.apache.spark.sql.connector.write.streaming.StreamingWrite
import org.apache.spark.sql.types.DataType
import org.apache.spark.util.CollectionAccumulator

import sparkbloom.formats.TableFormats
import sparkbloom.index.{SerializableConf, TableFormat, WriteIndexer}

/**
 * A V2 append into a table format's table (Spark's `AppendData`, planned by the format: Iceberg's) whose write tasks
 * also index what they write, as [[IndexingParquetFileFormat]] does for Spark's own Parquet writes. Each task's data
 * writer hashes the indexed columns of the rows it writes; when it commits, the format names the files it wrote from
 * the commit message its writer returned ([[TableFormat.filesWritten]]), and a task that wrote one file, of as many
 * rows as it hashed, builds that file's filters from its footer and the hashes into segments of the next index
 * version. Each task reports what it built through `written` (the updates of failed attempts are dropped by Spark).
 * On the driver, the batch write's commit sees every task's message, so the files the commit added are known
 * exactly ([[committed]]). The write is the format's, unchanged: rows, files, commit and metrics. Indexing that
 * fails is reported as such, and the driver refreshes the index instead; it never fails the write.
 *
 * @param columns the indexed columns by lower-case name: their ordinal in the rows written and their type
 */
final class IndexingV2Write(val inner: Write, format: TableFormat, plans: Seq[WriteIndexer.Plan],
                            columns: Map[String, (Int, DataType)], written: CollectionAccumulator[WriteIndexer.Part],
                            conf: SerializableConf) extends Write {
  /** The files the write's commit added (on the driver, once it committed); None before, or if unreadable. */
  @volatile var committed: Option[Seq[String]] = None

  override def description(): String = inner.description()
  override def toString: String = inner.toString
  override def supportedCustomMetrics(): Array[CustomMetric] = inner.supportedCustomMetrics()
  override def toStreaming: StreamingWrite = inner.toStreaming
  override def toBatch: BatchWrite = new IndexingV2Write.Batch(this, inner.toBatch, format, plans, columns, written,
    conf)
}

object IndexingV2Write {
  private final class Batch(owner: IndexingV2Write, inner: BatchWrite, format: TableFormat,
                            plans: Seq[WriteIndexer.Plan], columns: Map[String, (Int, DataType)],
                            written: CollectionAccumulator[WriteIndexer.Part], conf: SerializableConf)
    extends BatchWrite {
    /** The format's factory, wrapped when the wrapper can be shipped to the tasks (never a write failed by it). */
    override def createBatchWriterFactory(info: PhysicalWriteInfo): DataWriterFactory = {
      val factory = inner.createBatchWriterFactory(info)
      try {
        val wrapped = new Factory(factory, format.name, plans, columns, written, conf)
        SparkEnv.get.closureSerializer.newInstance().serialize(wrapped)
        wrapped
      } catch { case NonFatal(_) => factory } // no task reports: the driver refreshes the index instead
    }
    override def useCommitCoordinator(): Boolean = inner.useCommitCoordinator()
    override def onDataWriterCommit(message: WriterCommitMessage): Unit = inner.onDataWriterCommit(message)
    override def abort(messages: Array[WriterCommitMessage]): Unit = inner.abort(messages)
    override def commit(messages: Array[WriterCommitMessage]): Unit = {
      inner.commit(messages)
      owner.committed =
        try {
          val files = messages.toSeq.map(m => format.filesWritten(m, conf.value))
          if (files.exists(_.isEmpty)) None else Some(files.flatMap(_.get.map(_._1)))
        } catch { case NonFatal(_) => None }
    }
  }

  /** Shipped to the tasks: the format by its name (format objects are not serializable). */
  private final class Factory(inner: DataWriterFactory, formatName: String, plans: Seq[WriteIndexer.Plan],
                              columns: Map[String, (Int, DataType)], written: CollectionAccumulator[WriteIndexer.Part],
                              conf: SerializableConf) extends DataWriterFactory {
    override def createWriter(partitionId: Int, taskId: Long): DataWriter[InternalRow] = {
      val w = inner.createWriter(partitionId, taskId)
      try {
        val format = TableFormats.all.find(_.name == formatName).get
        val hashes = columns.map { case (n, (i, t)) => n -> new WriteIndexer.ColumnHashes(i, t) }
        new Writer(w, format, plans, hashes, written, conf, partitionId)
      } catch { case NonFatal(_) => w } // not reported: the driver sees a file missing and refreshes
    }
  }

  /** The format's data writer, plus the hashes of the indexed columns of every row it writes. */
  private final class Writer(inner: DataWriter[InternalRow], format: TableFormat, plans: Seq[WriteIndexer.Plan],
                             columns: Map[String, WriteIndexer.ColumnHashes],
                             written: CollectionAccumulator[WriteIndexer.Part], conf: SerializableConf,
                             partition: Int) extends DataWriter[InternalRow] {
    private val hashes = new WriteIndexer.RowHashes(columns)

    override def write(row: InternalRow): Unit = {
      inner.write(row)
      hashes.add(row)
    }

    override def commit(): WriterCommitMessage = {
      val message = inner.commit()
      index(message).foreach(written.add)
      message
    }

    /** Each index's part: the file written indexed, or reported as not indexed. Never throws. */
    private def index(message: WriterCommitMessage): Seq[WriteIndexer.Part] = {
      val notIndexed = (why: String) => plans.map(p => WriteIndexer.Part(p.indexDir, Nil, Nil, Nil, Nil, Seq(why)))
      try {
        format.filesWritten(message, conf.value) match {
          case Some(Seq()) => Nil // no rows, no file
          case Some(Seq((path, n))) if !hashes.failed && n == hashes.rows =>
            plans.map { p =>
              val task = new WriteIndexer.TaskIndexer(p, conf.value, partition)
              task.addFile(path, c => columns.get(c.toLowerCase(Locale.ROOT)))
              task.finish()
            }
          case Some(files) => notIndexed(files.map(_._1).mkString(", ")) // several files, or rows not as hashed
          case None => notIndexed("task")
        }
      } catch { case NonFatal(_) => notIndexed("task") }
    }

    override def abort(): Unit = inner.abort()
    override def close(): Unit = inner.close()
    override def currentMetricsValues(): Array[CustomTaskMetric] = inner.currentMetricsValues()
  }
}
