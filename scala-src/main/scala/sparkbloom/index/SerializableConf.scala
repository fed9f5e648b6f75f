package sparkbloom.index

import java.io.{ObjectInputStream, ObjectOutputStream}

import org.apache.hadoop.conf.Configuration

/** Hadoop's Configuration, shippable to tasks (its entries without their sources: [[LeanConf]]). */
final class SerializableConf(@transient var value: Configuration) extends Serializable {
  private def writeObject(out: ObjectOutputStream): Unit = { out.defaultWriteObject(); LeanConf.write(value, out) }
  private def readObject(in: ObjectInputStream): Unit = { value = new Configuration(false); value.readFields(in) }
}
