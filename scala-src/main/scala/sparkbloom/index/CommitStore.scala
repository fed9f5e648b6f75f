package sparkbloom.index

import java.lang.reflect.InvocationTargetException

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, FileContext, FileSystem, Options, Path}
import org.slf4j.LoggerFactory

/**
 * How a version's commit, `_commits/<N>.json`, becomes visible: all at once, to exactly one of the writers racing
 * for N. One implementation per kind of store, chosen by [[CommitStore.of]]:
 *
 *  - the local file system: a hard link of a written temporary file (fails if N exists): atomic;
 *  - S3A (`s3a://`): a PUT with `If-None-Match: *` (S3 since August 2024, MinIO), which the store refuses with 412
 *    when N exists: atomic. Sent through the AWS SDK client the user's S3A already carries (SDK v2 on Hadoop 3.4,
 *    v1 on Hadoop 3.3), so that it works on every Spark line, also those whose Hadoop lacks S3A's own conditional
 *    create (HADOOP-19256, Hadoop 3.4.2). Checked once per bucket and driver: a store that ignores the header
 *    (both of two conditional PUTs of one key succeed) gets the rename below, marked single-writer;
 *  - other object stores (GCS, OSS, COS, Azure's blob endpoint, S3A without a usable client): a rename without
 *    overwrite, which they implement as check, copy and delete: safe with one writer at a time only;
 *  - HDFS, ABFS (hierarchical namespace) and other file systems: a rename without overwrite: atomic there.
 *
 * Nothing here decides what a version holds: [[IndexStore.commit]] publishes, and a writer that lost rebases
 * ([[IndexManager]]) or fails with [[ConcurrentIndexUpdateException]].
 */
trait CommitStore {
  /** Writes `bytes` at `target` unless something is there; false when another writer's commit is. */
  def publishIfAbsent(fs: FileSystem, conf: Configuration, target: Path, bytes: Array[Byte]): Boolean

  /** Whether two writers racing for one version can both believe they won. */
  def atomic: Boolean

  /** How commits are made here, and how safe that is (DESCRIBE BLOOM INDEX's "Commit Safety"). */
  def describe: String
}

object CommitStore {
  private val log = LoggerFactory.getLogger(getClass)

  /** Schemes of object stores whose rename is a copy and a delete (Hadoop's connectors for them). */
  private val CopyingRename = Set("s3", "s3n", "s3a", "gs", "oss", "cos", "cosn", "obs", "wasb", "wasbs")

  /** Per S3A file system (Hadoop caches one per bucket and user): its commit store, checked once. */
  private val s3Stores =
    java.util.Collections.synchronizedMap(new java.util.WeakHashMap[FileSystem, CommitStore]())

  /**
   * Hadoop setting (`spark.hadoop.sparkbloom.commit.store` in a session): `rename` makes every commit a rename
   * without overwrite, as before conditional PUTs (the racing-writers test shows what that loses on S3); `auto`, the
   * default, picks by store.
   */
  val StoreKey = "sparkbloom.commit.store"

  /** The commit store for the file system holding an index. Never throws. */
  def of(fs: FileSystem): CommitStore = fs.getScheme match {
    case s if Option(fs.getConf).exists(_.get(StoreKey, "auto") == "rename") => new Rename(!CopyingRename(s), s)
    case "file" => LocalLink
    case "s3a" =>
      s3Stores.computeIfAbsent(fs,
        _ => S3ConditionalPut.of(fs).getOrElse(new Rename(atomic = false, "s3a, no S3 client reachable")))
    case s if CopyingRename(s) => new Rename(atomic = false, s)
    case s => new Rename(atomic = true, s)
  }

  /** A hard link of a written temporary file: fails if the target exists. */
  object LocalLink extends CommitStore {
    def publishIfAbsent(fs: FileSystem, conf: Configuration, target: Path, bytes: Array[Byte]): Boolean =
      withTemporary(fs, target, bytes) { tmp =>
        try {
          java.nio.file.Files.createLink(localFile(fs, target).toPath, localFile(fs, tmp).toPath); true
        } catch { case _: java.nio.file.FileAlreadyExistsException => false }
      }
    def atomic: Boolean = true
    def describe: String = "atomic (local file system: hard link)"
  }

  /** A written temporary file renamed without overwrite: atomic where the file system's rename is. */
  final class Rename(val atomic: Boolean, scheme: String) extends CommitStore {
    def publishIfAbsent(fs: FileSystem, conf: Configuration, target: Path, bytes: Array[Byte]): Boolean =
      withTemporary(fs, target, bytes) { tmp =>
        try {
          FileContext.getFileContext(target.toUri, conf).rename(tmp, target, Options.Rename.NONE); true
        } catch { case _: FileAlreadyExistsException => false }
      }
    def describe: String =
      if (atomic) s"atomic ($scheme: rename without overwrite)"
      else
        s"single writer ($scheme: a rename is a copy and a delete, so two writers racing for a version can both " +
          "succeed; write to an indexed table from one job at a time, see README 'On an object store')"
  }

  private def withTemporary(fs: FileSystem, target: Path, bytes: Array[Byte])(publish: Path => Boolean): Boolean = {
    val tmp = new Path(target.getParent, s".${target.getName}.${java.util.UUID.randomUUID()}.tmp")
    IndexStore.writeNew(fs, tmp, bytes)
    try publish(tmp)
    finally fs.delete(tmp, false)
  }

  private def localFile(fs: FileSystem, p: Path): java.io.File = fs match {
    case l: org.apache.hadoop.fs.LocalFileSystem => l.pathToFile(p)
    case r: org.apache.hadoop.fs.RawLocalFileSystem => r.pathToFile(p)
    case _ => new java.io.File(p.toUri.getPath)
  }

  /**
   * A conditional PUT (`If-None-Match: *`) through the S3 client of an S3A file system, reached by reflection
   * (S3A and the AWS SDK are the user's, not sparkbloom's dependencies): the store answers 412 when the key exists,
   * and 409 when a conditional write of the key is in flight (then retried). A PUT whose answer was lost and
   * retried by the SDK may meet its own commit: a 412 is a loss only when the stored bytes are not these.
   */
  final class S3ConditionalPut private (sdk: S3ConditionalPut.Sdk) extends CommitStore {
    /** None until checked; then whether the store refused a second conditional PUT of a key. */
    @volatile private var honoured: Option[Boolean] = None
    private val fallback = new Rename(atomic = false, "s3a, the store ignores If-None-Match")

    def publishIfAbsent(fs: FileSystem, conf: Configuration, target: Path, bytes: Array[Byte]): Boolean = {
      if (honoured.isEmpty) check(fs, target.getParent)
      if (honoured.contains(false)) return fallback.publishIfAbsent(fs, conf, target, bytes)
      val q = fs.makeQualified(target)
      var attempt = 0
      while (true) {
        attempt += 1
        put(q, bytes) match {
          case 200 => return true
          case 412 => return sameBytes(fs, q, bytes)
          case 409 if attempt < S3ConditionalPut.ConflictAttempts =>
            Thread.sleep(50L * attempt) // another conditional write of the key is in flight: its outcome decides
          case status =>
            throw new java.io.IOException(s"conditional PUT of $q answered $status ($attempt attempts)")
        }
      }
      false
    }

    private def put(q: Path, bytes: Array[Byte]): Int =
      sdk.putIfAbsent(q.toUri.getHost, q.toUri.getPath.stripPrefix("/"), bytes)

    /**
     * Whether the store honours `If-None-Match: *`, from two conditional PUTs of a probe key next to the commits
     * (the second must be refused); once per bucket and driver. A store that does not gets the rename, and a
     * warning.
     */
    private def check(fs: FileSystem, dir: Path): Unit = synchronized {
      if (honoured.isEmpty) {
        val probe = fs.makeQualified(new Path(dir, s".conditional-put-probe-${java.util.UUID.randomUUID()}"))
        try {
          val (first, second) = (put(probe, Array[Byte](1)), put(probe, Array[Byte](2)))
          honoured = Some(first == 200 && second == 412)
          if (!honoured.get)
            log.warn(s"sparkbloom: ${probe.toUri.getHost} does not refuse a second PUT with If-None-Match: * " +
              s"(answers $first, $second): index commits there are safe for one writer at a time only")
        } finally
          try fs.delete(probe, false)
          catch { case NonFatal(_) => }
      }
    }

    def atomic: Boolean = !honoured.contains(false)
    def describe: String = honoured match {
      case Some(false) => fallback.describe
      case Some(true) => s"atomic (s3a: conditional PUT, If-None-Match: *, through the ${sdk.name}; store checked)"
      case None =>
        s"atomic if the store refuses a second PUT with If-None-Match: * (s3a, through the ${sdk.name}; checked " +
          "at this driver's first commit to the bucket)"
    }
  }

  /** Whether the object at `p` holds exactly `bytes`. */
  private def sameBytes(fs: FileSystem, p: Path, bytes: Array[Byte]): Boolean =
    try {
      val in = fs.open(p)
      try java.util.Arrays.equals(in.readAllBytes(), bytes)
      finally in.close()
    } catch { case NonFatal(_) => false }

  object S3ConditionalPut {
    private[index] val ConflictAttempts = 6

    /**
     * One way to send `PUT` with `If-None-Match: *`: the HTTP status it got (200, 412, 409, ...); and a LIST of one
     * key: its size and modification time as a listing of its directory gives them (milliseconds where the store
     * lists them), None when it is not there.
     */
    trait Sdk {
      def name: String
      def putIfAbsent(bucket: String, key: String, bytes: Array[Byte]): Int
      def listedAs(bucket: String, key: String): Option[(Long, Long)]
    }

    /** Per S3A file system: its SDK client, or None (no client reachable). */
    private val sdks =
      java.util.Collections.synchronizedMap(new java.util.WeakHashMap[FileSystem, Option[Sdk]]())

    /** The S3 client of S3A file system `fs` (cached per file system), None when none is reachable. */
    private[index] def sdkFor(fs: FileSystem): Option[Sdk] = sdks.computeIfAbsent(fs, _ => sdkOf(fs))

    /** The conditional store for S3A file system `fs`; None when no S3 client of it is reachable. */
    def of(fs: FileSystem): Option[S3ConditionalPut] = sdkFor(fs).map(new S3ConditionalPut(_))

    private def sdkOf(fs: FileSystem): Option[Sdk] =
      try Some(new SdkV2(fs))
      catch {
        case e @ (NonFatal(_) | _: LinkageError) =>
          try Some(new SdkV1(fs))
          catch {
            case e1 @ (NonFatal(_) | _: LinkageError) =>
              log.warn(s"sparkbloom: no S3 client reachable in S3A (${e.getMessage}; ${e1.getMessage}): index " +
                "commits are safe for one writer at a time only")
              None
          }
      }

    private def unwrap(e: Throwable): Throwable = e match {
      case i: InvocationTargetException if i.getCause != null => unwrap(i.getCause)
      case other => other
    }

    /** The HTTP status of a service error of either SDK, if `e` is one. */
    private def statusOf(e: Throwable, method: String): Option[Int] =
      try Some(e.getClass.getMethod(method).invoke(e).asInstanceOf[Int])
      catch { case NonFatal(_) => None }

    /** AWS SDK v2 (Hadoop 3.4): `S3AFileSystem.getS3AInternals().getAmazonS3Client(reason)`. */
    private final class SdkV2(fs: FileSystem) extends Sdk {
      private val loader = fs.getClass.getClassLoader
      private def cls(n: String): Class[_] = Class.forName(n, true, loader)
      private val internals = fs.getClass.getMethod("getS3AInternals").invoke(fs)
      private val client = cls("org.apache.hadoop.fs.s3a.S3AInternals").getMethod("getAmazonS3Client", classOf[String])
        .invoke(internals, "sparkbloom index commit")
      private val requestCls = cls("software.amazon.awssdk.services.s3.model.PutObjectRequest")
      private val builderCls = cls("software.amazon.awssdk.services.s3.model.PutObjectRequest$Builder")
      private val overrideCls = cls("software.amazon.awssdk.awscore.AwsRequestOverrideConfiguration")
      private val overrideBuilderCls = cls("software.amazon.awssdk.awscore.AwsRequestOverrideConfiguration$Builder")
      private val bodyCls = cls("software.amazon.awssdk.core.sync.RequestBody")
      private val put = cls("software.amazon.awssdk.services.s3.S3Client").getMethod("putObject", requestCls, bodyCls)
      private val serviceError = cls("software.amazon.awssdk.awscore.exception.AwsServiceException")
      private val listCls = cls("software.amazon.awssdk.services.s3.model.ListObjectsV2Request")
      private val listBuilderCls = cls("software.amazon.awssdk.services.s3.model.ListObjectsV2Request$Builder")
      private val list = cls("software.amazon.awssdk.services.s3.S3Client").getMethod("listObjectsV2", listCls)
      private val objectCls = cls("software.amazon.awssdk.services.s3.model.S3Object")
      def name: String = "AWS SDK v2 client of S3A"

      def listedAs(bucket: String, key: String): Option[(Long, Long)] = {
        val b = listCls.getMethod("builder").invoke(null)
        listBuilderCls.getMethod("bucket", classOf[String]).invoke(b, bucket)
        listBuilderCls.getMethod("prefix", classOf[String]).invoke(b, key)
        listBuilderCls.getMethod("maxKeys", classOf[java.lang.Integer]).invoke(b, Integer.valueOf(1))
        val response = try list.invoke(client, listBuilderCls.getMethod("build").invoke(b))
        catch { case NonFatal(e) => throw unwrap(e) }
        val contents = response.getClass.getMethod("contents").invoke(response).asInstanceOf[java.util.List[AnyRef]]
        // the key itself sorts first among the keys it prefixes
        contents.iterator().asScala.take(1).map { o =>
          (objectCls.getMethod("key").invoke(o).asInstanceOf[String],
            objectCls.getMethod("size").invoke(o).asInstanceOf[java.lang.Long].longValue,
            objectCls.getMethod("lastModified").invoke(o).asInstanceOf[java.time.Instant].toEpochMilli)
        }.collectFirst { case (k, size, mtime) if k == key => (size, mtime) }
      }

      def putIfAbsent(bucket: String, key: String, bytes: Array[Byte]): Int = {
        val ob = overrideCls.getMethod("builder").invoke(null)
        overrideBuilderCls.getMethod("putHeader", classOf[String], classOf[String]).invoke(ob, "If-None-Match", "*")
        val overrides = overrideBuilderCls.getMethod("build").invoke(ob)
        val b = requestCls.getMethod("builder").invoke(null)
        builderCls.getMethod("bucket", classOf[String]).invoke(b, bucket)
        builderCls.getMethod("key", classOf[String]).invoke(b, key)
        builderCls.getMethod("contentLength", classOf[java.lang.Long]).invoke(b, java.lang.Long.valueOf(bytes.length))
        builderCls.getMethod("overrideConfiguration", overrideCls).invoke(b, overrides)
        val request = builderCls.getMethod("build").invoke(b)
        val body = bodyCls.getMethod("fromBytes", classOf[Array[Byte]]).invoke(null, bytes)
        try { put.invoke(client, request, body); 200 }
        catch {
          case NonFatal(e) =>
            val cause = unwrap(e)
            if (serviceError.isInstance(cause)) statusOf(cause, "statusCode").getOrElse(throw cause) else throw cause
        }
      }
    }

    /** AWS SDK v1 (Hadoop 3.3): `S3AFileSystem.getAmazonS3ClientForTesting(reason)`. */
    private final class SdkV1(fs: FileSystem) extends Sdk {
      private val loader = fs.getClass.getClassLoader
      private def cls(n: String): Class[_] = Class.forName(n, true, loader)
      private val client = fs.getClass.getMethod("getAmazonS3ClientForTesting", classOf[String])
        .invoke(fs, "sparkbloom index commit")
      private val requestCls = cls("com.amazonaws.services.s3.model.PutObjectRequest")
      private val metadataCls = cls("com.amazonaws.services.s3.model.ObjectMetadata")
      private val put = cls("com.amazonaws.services.s3.AmazonS3").getMethod("putObject", requestCls)
      private val serviceError = cls("com.amazonaws.AmazonServiceException")
      private val listCls = cls("com.amazonaws.services.s3.model.ListObjectsV2Request")
      private val list = cls("com.amazonaws.services.s3.AmazonS3").getMethod("listObjectsV2", listCls)
      private val summaryCls = cls("com.amazonaws.services.s3.model.S3ObjectSummary")
      def name: String = "AWS SDK v1 client of S3A"

      def listedAs(bucket: String, key: String): Option[(Long, Long)] = {
        val request = listCls.getConstructor().newInstance().asInstanceOf[AnyRef]
        listCls.getMethod("setBucketName", classOf[String]).invoke(request, bucket)
        listCls.getMethod("setPrefix", classOf[String]).invoke(request, key)
        listCls.getMethod("setMaxKeys", classOf[Integer]).invoke(request, Integer.valueOf(1))
        val result = try list.invoke(client, request)
        catch { case NonFatal(e) => throw unwrap(e) }
        val summaries = result.getClass.getMethod("getObjectSummaries").invoke(result)
          .asInstanceOf[java.util.List[AnyRef]]
        summaries.iterator().asScala.take(1).map { o =>
          (summaryCls.getMethod("getKey").invoke(o).asInstanceOf[String],
            summaryCls.getMethod("getSize").invoke(o).asInstanceOf[java.lang.Long].longValue,
            summaryCls.getMethod("getLastModified").invoke(o).asInstanceOf[java.util.Date].getTime)
        }.collectFirst { case (k, size, mtime) if k == key => (size, mtime) }
      }

      def putIfAbsent(bucket: String, key: String, bytes: Array[Byte]): Int = {
        val metadata = metadataCls.getConstructor().newInstance().asInstanceOf[AnyRef]
        metadataCls.getMethod("setContentLength", classOf[Long]).invoke(metadata, java.lang.Long.valueOf(bytes.length))
        val request = requestCls.getConstructor(classOf[String], classOf[String], classOf[java.io.InputStream],
          metadataCls).newInstance(bucket, key, new java.io.ByteArrayInputStream(bytes), metadata)
        requestCls.getMethod("putCustomRequestHeader", classOf[String], classOf[String])
          .invoke(request, "If-None-Match", "*")
        try { put.invoke(client, request.asInstanceOf[AnyRef]); 200 }
        catch {
          case NonFatal(e) =>
            val cause = unwrap(e)
            if (serviceError.isInstance(cause)) statusOf(cause, "getStatusCode").getOrElse(throw cause)
            else throw cause
        }
      }
    }
  }
}
