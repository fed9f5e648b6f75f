package sparkbloom.write

import java.util.Locale
import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.mapreduce.{Job, TaskAttemptContext}
import org.apache.spark.TaskContext
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.{OutputWriter, OutputWriterFactory}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.types.StructType
import org.apache.spark.util.CollectionAccumulator

import sparkbloom.index.WriteIndexer

/**
 * Spark's Parquet format, whose write tasks also index what they write ([[WriteIndexer]]): each output writer
 * hashes the indexed columns of the rows it writes, and once its file is closed the task builds that file's
 * filters into segments of the next index version. Each task reports what it built through `written` when it
 * ends (the updates of failed attempts are dropped by Spark, as for any accumulator). The files are Spark's,
 * byte for byte: nothing is added to them. A failure to index is never a failure of the write: the file is then
 * reported as not indexed, and the driver refreshes the index instead.
 */
final class IndexingParquetFileFormat(plans: Seq[WriteIndexer.Plan],
                                      written: CollectionAccumulator[WriteIndexer.Part]) extends ParquetFileFormat {
  override def prepareWrite(session: SparkSession, job: Job, options: Map[String, String], dataSchema: StructType)
      : OutputWriterFactory = {
    val inner = super.prepareWrite(session, job, options, dataSchema)
    new IndexingParquetFileFormat.WriterFactory(inner, plans, written)
  }
}

object IndexingParquetFileFormat {
  /**
   * The tasks read their files and write the index through the write job's own Hadoop configuration, which Spark
   * already ships to every task (`context.getConfiguration`): shipping a copy would cost each task a second
   * deserialization of the whole configuration (a gzip stream per property).
   */
  final class WriterFactory(inner: OutputWriterFactory, plans: Seq[WriteIndexer.Plan],
                            written: CollectionAccumulator[WriteIndexer.Part])
    extends OutputWriterFactory {
    override def getFileExtension(context: TaskAttemptContext): String = inner.getFileExtension(context)

    override def newInstance(path: String, dataSchema: StructType, context: TaskAttemptContext): OutputWriter = {
      val w = inner.newInstance(path, dataSchema, context)
      try {
        val task = TaskIndexing.of(plans, written, context.getConfiguration)
        val names = plans.flatMap(_.columns.map(_.name.toLowerCase(Locale.ROOT))).distinct
        val columns = names.flatMap { n =>
          val i = dataSchema.fields.indexWhere(_.name.toLowerCase(Locale.ROOT) == n)
          if (i < 0 || WriteIndexer.physicalType(dataSchema(i).dataType).isEmpty) None
          else Some(n -> new WriteIndexer.ColumnHashes(i, dataSchema(i).dataType))
        }.toMap
        new Writer(w, task, columns)
      } catch { case NonFatal(_) => w } // not reported: the driver sees a file missing and refreshes
    }
  }

  /** Spark's writer, plus the hashes of the indexed columns of every row it writes. */
  private final class Writer(inner: OutputWriter, task: TaskIndexing, columns: Map[String, WriteIndexer.ColumnHashes])
    extends OutputWriter {
    private val hashes = new WriteIndexer.RowHashes(columns)

    override def write(row: InternalRow): Unit = {
      inner.write(row)
      hashes.add(row)
    }

    override def close(): Unit = {
      inner.close()
      task.closed(inner.path(), if (hashes.failed) _ => None else n => columns.get(n.toLowerCase(Locale.ROOT)))
    }

    override def path(): String = inner.path()
  }

  /** One task attempt's indexing: an indexer per index, reported when the task ends. */
  private final class TaskIndexing(plans: Seq[WriteIndexer.Plan], conf: Configuration, partition: Int) {
    private val indexers = plans.map(p => new WriteIndexer.TaskIndexer(p, conf, partition))
    private var broken = Set.empty[String] // files whose indexing failed in every index

    def closed(path: String, hashes: String => Option[WriteIndexer.ColumnHashes]): Unit =
      indexers.foreach(i =>
        try i.addFile(path, hashes)
        catch { case NonFatal(_) => broken += path })

    def finish(): Seq[WriteIndexer.Part] = indexers.map { i =>
      try {
        val p = i.finish(); p.copy(failed = p.failed ++ broken)
      } catch { case NonFatal(_) => WriteIndexer.Part("", Nil, Nil, Nil, Nil, Seq("task")) }
    }
  }

  private object TaskIndexing {
    private val running = new ConcurrentHashMap[java.lang.Long, TaskIndexing]()

    def of(plans: Seq[WriteIndexer.Plan], written: CollectionAccumulator[WriteIndexer.Part],
           conf: Configuration): TaskIndexing = {
      val ctx = TaskContext.get()
      val id = java.lang.Long.valueOf(ctx.taskAttemptId())
      val existing = running.get(id)
      if (existing != null) existing
      else {
        val t = new TaskIndexing(plans, conf, ctx.partitionId())
        running.put(id, t)
        // Completion listeners run before the task's accumulator updates are collected.
        ctx.addTaskCompletionListener[Unit] { _ =>
          running.remove(id)
          t.finish().foreach(written.add)
        }
        t
      }
    }
  }
}
