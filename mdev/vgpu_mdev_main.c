// SPDX-License-Identifier: GPL-2.0
/*
 * vgpu_mdev.ko: the VFIO mediated-device parent of vgpu. Each instance is
 * an emulated PCI device (include/vgpu/pci.h) that QEMU gives to a VM;
 * the vGPU behind it is composed and run by vgpud and its workers, which
 * drive this module through /dev/vgpu-ctl (include/vgpu/mdev_ctl.h).
 *
 * This file: the type catalogue, the parent device, the mdev driver
 * (probe = create an instance, remove), debugfs counters, init/exit.
 */
#include <linux/debugfs.h>
#include <linux/device.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "vgpu_mdev.h"

struct vgpu_mdev vgpu_mdev;

#define GIB (1ull << 30)
#define VGPU_TYPE(idx, nm, pretty, s, mem, iso, ch)                            \
	{                                                                      \
		.mtype = {.sysfs_name = nm, .pretty_name = pretty},            \
		.info = {.index = idx,                                         \
			 .sms = s,                                             \
			 .memory = mem,                                        \
			 .isolation = iso,                                     \
			 .channels = ch,                                       \
			 .name = nm},                                          \
	}

/*
 * The fixed type catalogue (6.1 fixes the types when the parent registers;
 * vgpud reads it with VGPU_MDEV_IOC_GET_TYPE). sysfs shows each type as
 * /sys/class/mdev_bus/vgpu/mdev_supported_types/vgpu-<name>.
 *
 *   index name          SMs  memory  isolation  channels
 *   0     custom          0     0    (blueprint)   8   vGPU composed by
 *                                                       vgpu-admin and bound
 *                                                       to the UUID
 *   1     8sm-4g          8   4 GiB  shared        4
 *   2     16sm-8g        16   8 GiB  shared        4
 *   3     32sm-16g       32  16 GiB  shared        8
 *   4     64sm-32g       64  32 GiB  shared        8
 *   5     16sm-8g-excl   16   8 GiB  exclusive     4
 *
 * Channel counts are powers of two: QEMU requires a power-of-two BAR, and
 * BAR2 is exactly channels * VGPU_PCI_CHANNEL_STRIDE. Add types at the
 * end only: the index is part of the contract with vgpud.
 */
struct vgpu_type vgpu_types[] = {
	VGPU_TYPE(0, "custom", "vgpu custom (blueprint)", 0, 0, 0, 8),
	VGPU_TYPE(1, "8sm-4g", "vgpu 8 SMs 4 GiB", 8, 4 * GIB, VGPU_MDEV_SHARED,
		  4),
	VGPU_TYPE(2, "16sm-8g", "vgpu 16 SMs 8 GiB", 16, 8 * GIB,
		  VGPU_MDEV_SHARED, 4),
	VGPU_TYPE(3, "32sm-16g", "vgpu 32 SMs 16 GiB", 32, 16 * GIB,
		  VGPU_MDEV_SHARED, 8),
	VGPU_TYPE(4, "64sm-32g", "vgpu 64 SMs 32 GiB", 64, 32 * GIB,
		  VGPU_MDEV_SHARED, 8),
	VGPU_TYPE(5, "16sm-8g-excl", "vgpu 16 SMs 8 GiB exclusive", 16, 8 * GIB,
		  VGPU_MDEV_EXCLUSIVE, 4),
};
const unsigned int vgpu_ntypes = ARRAY_SIZE(vgpu_types);
static struct mdev_type *vgpu_mtypes[ARRAY_SIZE(vgpu_types)];

/* What sysfs says about a type while no vgpud has described it. */
void vgpu_type_reset_available(struct vgpu_type *type)
{
	type->available = 0;
	snprintf(type->description, sizeof(type->description),
		 "%s: vgpud is not running", type->mtype.pretty_name);
}

static struct vgpu_type *to_vgpu_type(struct mdev_type *mtype)
{
	return container_of(mtype, struct vgpu_type, mtype);
}

static unsigned int vgpu_get_available(struct mdev_type *mtype)
{
	struct vgpu_type *type = to_vgpu_type(mtype);
	unsigned int n;

	mutex_lock(&vgpu_mdev.lock);
	n = type->available;
	mutex_unlock(&vgpu_mdev.lock);
	return n;
}

static ssize_t vgpu_show_description(struct mdev_type *mtype, char *buf)
{
	struct vgpu_type *type = to_vgpu_type(mtype);
	ssize_t n;

	mutex_lock(&vgpu_mdev.lock);
	n = sysfs_emit(buf, "%s\n", type->description);
	mutex_unlock(&vgpu_mdev.lock);
	return n;
}

/*
 * Creating an instance (echo UUID > .../create): vgpud composes the vGPU
 * (vgpu_inst_create waits for its CREATE_DONE), then the device becomes a
 * VFIO device.
 */
static int vgpu_probe(struct mdev_device *mdev)
{
	struct vgpu_inst *inst;
	int ret;

	inst = vfio_alloc_device(vgpu_inst, vdev, &mdev->dev, &vgpu_vfio_ops);
	if (IS_ERR(inst))
		return PTR_ERR(inst);

	ret = vgpu_inst_create(inst);
	if (ret)
		goto err_put;

	ret = vfio_register_emulated_iommu_dev(&inst->vdev);
	if (ret) {
		dev_err(&mdev->dev, "vfio registration failed: %d\n", ret);
		vgpu_inst_unlink(inst, true);
		goto err_put;
	}
	dev_set_drvdata(&mdev->dev, inst);
	dev_info(&mdev->dev, "vgpu instance %u (%s) created\n", inst->id,
		 inst->type->info.name);
	return 0;

err_put:
	vfio_put_device(&inst->vdev);
	return ret;
}

/*
 * Removing an instance: vfio_unregister_group_dev() waits until the VFIO
 * user lets go (calling our .request meanwhile), then vgpud is told.
 */
static void vgpu_remove(struct mdev_device *mdev)
{
	struct vgpu_inst *inst = dev_get_drvdata(&mdev->dev);

	vfio_unregister_group_dev(&inst->vdev);
	vgpu_inst_unlink(inst, true);
	dev_info(&mdev->dev, "vgpu instance %u removed\n", inst->id);
	vfio_put_device(&inst->vdev);
}

static struct mdev_driver vgpu_driver = {
	.device_api = VFIO_DEVICE_API_PCI_STRING,
	.driver =
		{
			.name = "vgpu_mdev",
			.owner = THIS_MODULE,
			.mod_name = KBUILD_MODNAME,
		},
	.probe = vgpu_probe,
	.remove = vgpu_remove,
	.get_available = vgpu_get_available,
	.show_description = vgpu_show_description,
};

static int vgpu_objects_show(struct seq_file *s, void *unused)
{
	struct vgpu_counters *c = &vgpu_mdev.cnt;

	seq_printf(s, "instances %d\n", atomic_read(&c->instances));
	seq_printf(s, "channels %d\n", atomic_read(&c->channels));
	seq_printf(s, "events %d\n", atomic_read(&c->events));
	seq_printf(s, "memfds %d\n", atomic_read(&c->memfds));
	seq_printf(s, "watchers %d\n", atomic_read(&c->watchers));
	seq_printf(s, "irq_eventfds %d\n", atomic_read(&c->irq_eventfds));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vgpu_objects);

static void vgpu_parent_release(struct device *dev)
{
	/* static storage: nothing to free */
}

static int vgpu_check_catalogue(void)
{
	unsigned int i;

	for (i = 0; i < vgpu_ntypes; i++) {
		const struct vgpu_mdev_type_info *t = &vgpu_types[i].info;

		if (t->index != i || !t->channels ||
		    t->channels > VGPU_PCI_MAX_CHANNELS ||
		    !is_power_of_2(t->channels)) {
			pr_err("vgpu_mdev: bad catalogue entry %u (%s)\n", i,
			       t->name);
			return -EINVAL;
		}
		vgpu_type_reset_available(&vgpu_types[i]);
		vgpu_mtypes[i] = &vgpu_types[i].mtype;
	}
	return 0;
}

static int __init vgpu_mdev_init(void)
{
	struct vgpu_mdev *g = &vgpu_mdev;
	int ret;

	mutex_init(&g->lock);
	INIT_LIST_HEAD(&g->instances);
	g->next_id = 1;
	ret = vgpu_check_catalogue();
	if (ret)
		return ret;

	ret = vgpu_ctl_init();
	if (ret)
		return ret;

	ret = mdev_register_driver(&vgpu_driver);
	if (ret)
		goto err_ctl;

	g->cls = class_create(THIS_MODULE, VGPU_MDEV_NAME);
	if (IS_ERR(g->cls)) {
		ret = PTR_ERR(g->cls);
		goto err_driver;
	}
	g->dev.class = g->cls;
	g->dev.release = vgpu_parent_release;
	dev_set_name(&g->dev, "%s", VGPU_MDEV_NAME);
	ret = device_register(&g->dev);
	if (ret) {
		put_device(&g->dev);
		goto err_class;
	}

	ret = mdev_register_parent(&g->parent, &g->dev, &vgpu_driver,
				   vgpu_mtypes, vgpu_ntypes);
	if (ret)
		goto err_dev;

	g->debugfs = debugfs_create_dir("vgpu_mdev", NULL);
	debugfs_create_file("objects", 0400, g->debugfs, NULL,
			    &vgpu_objects_fops);

	ret = vgpu_ctl_register();
	if (ret)
		goto err_parent;
	pr_info("vgpu_mdev: parent %s registered, %u types\n", VGPU_MDEV_NAME,
		vgpu_ntypes);
	return 0;

err_parent:
	debugfs_remove_recursive(g->debugfs);
	mdev_unregister_parent(&g->parent);
err_dev:
	device_unregister(&g->dev);
err_class:
	class_destroy(g->cls);
err_driver:
	mdev_unregister_driver(&vgpu_driver);
err_ctl:
	vgpu_ctl_exit();
	return ret;
}

/*
 * The control device pins the module while vgpud holds it, and goes
 * first; instances are removed by mdev_unregister_parent() (each through
 * vgpu_remove).
 */
static void __exit vgpu_mdev_exit(void)
{
	struct vgpu_mdev *g = &vgpu_mdev;

	vgpu_ctl_deregister();
	mdev_unregister_parent(&g->parent);
	device_unregister(&g->dev);
	class_destroy(g->cls);
	mdev_unregister_driver(&vgpu_driver);
	debugfs_remove_recursive(g->debugfs);
	vgpu_ctl_exit();
	pr_info("vgpu_mdev: unloaded\n");
}

module_init(vgpu_mdev_init);
module_exit(vgpu_mdev_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vgpu: VFIO mediated-device parent for composable vGPUs");
MODULE_SOFTDEP("pre: vfio mdev");
