package sparkbloom

import java.io.File
import java.nio.file.Files

/** Paths to the shared fixtures and small byte helpers used by several suites. */
object TestSupport {
  /** `../shared` of the checkout, passed by build.sbt as the system property `sparkbloom.shared`. */
  lazy val shared: File = {
    val dir = new File(System.getProperty("sparkbloom.shared", "../shared"))
    require(new File(dir, "vectors.md").isFile, s"shared folder not found at ${dir.getAbsolutePath}")
    dir
  }

  def fixture(relative: String): File = {
    val f = new File(new File(shared, "fixtures"), relative)
    require(f.isFile, s"missing fixture ${f.getAbsolutePath}")
    f
  }

  def fixtureBytes(relative: String): Array[Byte] = Files.readAllBytes(fixture(relative).toPath)

  def hex(s: String): Array[Byte] = {
    val clean = s.filterNot(_.isWhitespace)
    require(clean.length % 2 == 0, s"odd hex string $s")
    clean.grouped(2).map(Integer.parseInt(_, 16).toByte).toArray
  }

  def toHex(b: Array[Byte]): String = b.map(x => f"${x & 0xff}%02x").mkString

  def utf8(s: String): Array[Byte] = s.getBytes(java.nio.charset.StandardCharsets.UTF_8)

  /** An unsigned 64-bit hex literal (e.g. from an xxHash table) as the signed Long Java and Scala use. */
  def u64(hexDigits: String): Long = java.lang.Long.parseUnsignedLong(hexDigits.stripPrefix("0x").stripPrefix("0X"), 16)
}
