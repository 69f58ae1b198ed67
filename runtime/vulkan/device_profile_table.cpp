// The rows of the device-profile table (runtime/vulkan/device_profiles.h): the published limits of
// real GPUs, each with its source. docs/device-profiles.md lists them.
#include "runtime/vulkan/device_profiles.h"

namespace remat {

namespace {

// The vulkan.gpuinfo.org exports Khronos keeps as test data for its validation layers or as the
// reports behind LunarG's desktop profiles (Vulkan-Profiles); each URL pins a commit with the file.
// Values are copied from those files as reported; a field an export lacks stays empty.
constexpr uint32_t kU32Max = 4294967295u;

// Turnip's limits are tu_get_properties() and its extension and feature tables, with the
// constants of tu_common.h and the per-GPU entries of freedreno_devices.py (cs_shared_mem_size,
// threadsize_base, max_waves, supports_double_threadsize, storage_16bit, has_getfiberid).
constexpr std::string_view kTurnipSource =
    "Mesa turnip source: tu_get_properties() and the extension and feature tables in "
    "https://github.com/mirror/mesa/blob/04f4d8dbd1653ea5003448318047655d7025fa5d/"
    "src/freedreno/vulkan/tu_device.cc; the constants in "
    "https://github.com/bminor/mesa-mesa/blob/4ac666eaa778967648e33a1c448f9747facbefe0/"
    "src/freedreno/vulkan/tu_common.h; the GPU's entry in "
    "https://github.com/mirror/mesa/blob/0c4fa84a716db26b729fb43cd8097d8515145b0b/"
    "src/freedreno/common/freedreno_devices.py";
constexpr std::string_view kTurnipNotes =
    "driver source, not a device report, and turnip's limits, not Qualcomm's driver's: memory "
    "heaps and maxPerStageDescriptorStorageBuffers (computed from the descriptor set size) "
    "unclamped; subgroups are 128 wide, 64 on request (VK_EXT_subgroup_size_control)";

const DeviceProfile kProfiles[] = {
    {
        .name = "mali-g78",
        .device = "Arm Mali-G78 (Google Pixel 6)",
        .driver = "Arm Mali r36p0 (v1.r36p0-01eac0, driver 36.0.0), Android 13, Vulkan 1.1.201",
        .source =
            "vulkan.gpuinfo.org export VP_GPUINFO_Google_Pixel_6_36_0_0_android_13_0: "
            "https://github.com/KhronosGroup/Vulkan-ValidationLayers/blob/"
            "dee08cec325d07d91c159caa0561adda91d34c51/tests/device_profiles/pixel_6_mali.json",
        .notes = "memory heaps not in the export (heaps unclamped)",
        .max_storage_buffer_range = 268435456,
        .max_memory_allocation_size = 7951626240,
        .min_storage_buffer_offset_alignment = 64,
        .max_texel_buffer_elements = 268435456,
        .min_texel_buffer_offset_alignment = 64,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 512,
        .max_workgroup_size = std::array<uint32_t, 3>{512, 512, 512},
        .max_workgroup_count = std::array<uint32_t, 3>{kU32Max, kU32Max, kU32Max},
        .max_push_constants_bytes = 256,
        .max_storage_buffers_per_stage = 500000,
        .timestamps = true,
        .subgroup_size = 16,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = false,
        .push_descriptors = false,
        .memory_budget = false,
    },
    {
        .name = "adreno-v512",
        .device = "Qualcomm Adreno, model not named (the export labels the phone 'Google Pixel 6')",
        .driver = "Qualcomm Adreno Vulkan driver 512.502.0 (compiler EV031.32.02.10, 06/03/21), "
                  "Android 12, Vulkan 1.1.128",
        .source = "vulkan.gpuinfo.org export VP_GPUINFO_Google_Pixel_6_512_502_0_android_12_0: "
                  "https://github.com/KhronosGroup/Vulkan-ValidationLayers/blob/"
                  "e78a88596cf3e0361c1e453b40fef85ec55300dc/tests/device_profiles/"
                  "pixel_6_adreno.json",
        .notes = "memory heaps and storageBuffer16BitAccess not in the export (unclamped)",
        .max_storage_buffer_range = 536870912,
        .max_memory_allocation_size = 1073741824,
        .min_storage_buffer_offset_alignment = 64,
        .max_texel_buffer_elements = 134217728,
        .min_texel_buffer_offset_alignment = 64,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = std::array<uint32_t, 3>{512, 512, 512},
        .max_workgroup_count = std::array<uint32_t, 3>{65535, 65535, 65535},
        .max_push_constants_bytes = 128,
        .max_storage_buffers_per_stage = 524288,
        .timestamps = true,
        .subgroup_size = 64,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = false,
        .shader_float16 = true,
        .buffer_device_address = false,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = false,
    },
    {
        .name = "adreno-540",
        .device = "Qualcomm Adreno 540 (Sony Xperia XZ Premium)",
        .driver = "Qualcomm driver 14.339.2737, Android 8.0.0, Vulkan 1.0.49",
        .source = "vulkan.gpuinfo.org export VP_GPUINFO_Sony_Xperia_XZ_Premium_14_339_2737_"
                  "android_8_0_0: https://github.com/KhronosGroup/Vulkan-ValidationLayers/blob/"
                  "dbb9f6b61a0524fb4364b03ce31d4e8ca0e8a256/tests/device_profiles/adreno_540.json",
        .notes = "a Vulkan 1.0 report: no maxMemoryAllocationSize, subgroups or workgroup size in "
                 "it, nor memory heaps (all unclamped); remat itself needs a Vulkan 1.1 driver",
        .max_storage_buffer_range = 2147483647,
        .min_storage_buffer_offset_alignment = 64,
        .max_texel_buffer_elements = 65536,
        .min_texel_buffer_offset_alignment = 64,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 1024,
        .max_workgroup_count = std::array<uint32_t, 3>{65535, 65535, 65535},
        .max_push_constants_bytes = 128,
        .max_storage_buffers_per_stage = 24,
        .timestamps = true,
        .storage_buffer_16bit = false,
        .shader_float16 = false,
        .buffer_device_address = false,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = false,
    },
    {
        .name = "intel-hd-520",
        .device = "Intel HD Graphics 520 (Skylake GT2)",
        .driver = "Mesa ANV 17.2.4, Linux, Vulkan 1.0.54",
        .source = "vulkan.gpuinfo.org export VP_GPUINFO_Intel_R__HD_Graphics_520__Skylake_GT2__17_"
                  "2_4_arch_unknown: https://github.com/KhronosGroup/Vulkan-ValidationLayers/blob/"
                  "dbb9f6b61a0524fb4364b03ce31d4e8ca0e8a256/tests/device_profiles/"
                  "intel_hd_graphics_520_skylake_gt2.json",
        .notes = "a Vulkan 1.0 report: no maxMemoryAllocationSize, subgroups or workgroup size in "
                 "it, nor memory heaps (all unclamped); remat itself needs a Vulkan 1.1 driver",
        .max_storage_buffer_range = 1073741824,
        .min_storage_buffer_offset_alignment = 4,
        .max_texel_buffer_elements = 134217728,
        .min_texel_buffer_offset_alignment = 1,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 896,
        .max_workgroup_count = std::array<uint32_t, 3>{65535, 65535, 65535},
        .max_push_constants_bytes = 128,
        .max_storage_buffers_per_stage = 64,
        .timestamps = false,
        .storage_buffer_16bit = false,
        .shader_float16 = false,
        .buffer_device_address = false,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = false,
    },
    {
        .name = "radeon-rx-480",
        .device = "AMD Radeon RX 480 (Polaris 10)",
        .driver = "AMD driver 2.0.27 (the export does not name it), Linux, Vulkan 1.1.70",
        .source = "vulkan.gpuinfo.org export VP_GPUINFO_AMD_Radeon__TM__RX_480_Graphics_2_0_27_"
                  "arch_unknown: https://github.com/KhronosGroup/Vulkan-ValidationLayers/blob/"
                  "dbb9f6b61a0524fb4364b03ce31d4e8ca0e8a256/tests/device_profiles/"
                  "amd_radeon_rx_480.json",
        .notes = "subgroups, workgroup size and memory heaps not in the export (unclamped)",
        .max_storage_buffer_range = kU32Max,
        .max_memory_allocation_size = 2147483648,
        .min_storage_buffer_offset_alignment = 4,
        .max_texel_buffer_elements = kU32Max,
        .min_texel_buffer_offset_alignment = 1,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 1024,
        .max_workgroup_count = std::array<uint32_t, 3>{65535, 65535, 65535},
        .max_push_constants_bytes = 128,
        .max_storage_buffers_per_stage = kU32Max,
        .timestamps = true,
        .storage_buffer_16bit = true,
        .shader_float16 = false,
        .buffer_device_address = false,
        .cooperative_matrix = false,
        .push_descriptors = false,
        .memory_budget = false,
    },
    {
        .name = "apple-m1",
        .device = "Apple M1 (MoltenVK)",
        .driver = "MoltenVK 1.4.1 (driver 0.2.2209), macOS 26.5.1, Vulkan 1.4.334",
        .source = "vulkan.gpuinfo.org export VP_GPUINFO_Apple_M1_0_2_2209_macos_26_5_1: "
                  "https://github.com/KhronosGroup/Vulkan-Profiles/blob/"
                  "910ea35629aa7ca7cb96335877e1abf253df704e/profiles/LunarG/"
                  "VP_LUNARG_desktop_baseline_2026/vp_gpuinfo_apple_m1_0_2_2209_macos_26_5_1.json",
        .notes = "memory heaps not in the export (unclamped); Metal varies the subgroup size from "
                 "4 to 32",
        .max_storage_buffer_range = kU32Max,
        .max_memory_allocation_size = 4294967296,
        .min_storage_buffer_offset_alignment = 16,
        .max_texel_buffer_elements = 67108864,
        .min_texel_buffer_offset_alignment = 16,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = std::array<uint32_t, 3>{1024, 1024, 1024},
        .max_workgroup_count = std::array<uint32_t, 3>{1073741824, 1073741824, 1073741824},
        .max_push_constants_bytes = 4096,
        .max_storage_buffers_per_stage = 31,
        .timestamps = true,
        .subgroup_size = 32,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = true,
    },
    {
        .name = "apple-m3-max",
        .device = "Apple M3 Max (MoltenVK)",
        .driver = "MoltenVK 1.2.7 (driver 0.2.2015), macOS 14.1, Vulkan 1.2.275",
        .source = "vulkan.gpuinfo.org export VP_GPUINFO_Apple_M3_Max_0_2_2015_osx_14_1: "
                  "https://github.com/KhronosGroup/Vulkan-Profiles/blob/"
                  "910ea35629aa7ca7cb96335877e1abf253df704e/profiles/LunarG/"
                  "VP_LUNARG_desktop_baseline_2024/vp_gpuinfo_apple_m3_max_0_2_2015_osx_14_1.json",
        .notes = "memory heaps not in the export (unclamped); Metal varies the subgroup size from "
                 "4 to 32",
        .max_storage_buffer_range = kU32Max,
        .max_memory_allocation_size = 21743271936,
        .min_storage_buffer_offset_alignment = 16,
        .max_texel_buffer_elements = 67108864,
        .min_texel_buffer_offset_alignment = 16,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = std::array<uint32_t, 3>{1024, 1024, 1024},
        .max_workgroup_count = std::array<uint32_t, 3>{1073741824, 1073741824, 1073741824},
        .max_push_constants_bytes = 4096,
        .max_storage_buffers_per_stage = 31,
        .timestamps = true,
        .subgroup_size = 32,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = true,
    },
    {
        .name = "intel-uhd-620",
        .device = "Intel UHD Graphics 620 (Whiskey Lake GT2)",
        .driver = "Mesa ANV 23.1.7, Linux, Vulkan 1.3.246",
        .source = "vulkan.gpuinfo.org export "
                  "VP_GPUINFO_Intel_R__UHD_Graphics_620__WHL_GT2__23_1_7_arch_unknown: "
                  "https://github.com/KhronosGroup/Vulkan-Profiles/blob/"
                  "910ea35629aa7ca7cb96335877e1abf253df704e/profiles/LunarG/"
                  "VP_LUNARG_desktop_baseline_2024/"
                  "vp_gpuinfo_intel_r__uhd_graphics_620__whl_gt2__23_1_7_arch_unknown.json",
        .notes = "memory heaps not in the export (unclamped); the driver varies the subgroup size "
                 "from 8 to 32",
        .max_storage_buffer_range = kU32Max,
        .max_memory_allocation_size = 15538538496,
        .min_storage_buffer_offset_alignment = 4,
        .max_texel_buffer_elements = 134217728,
        .min_texel_buffer_offset_alignment = 16,
        .max_shared_memory_bytes = 65536,
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = std::array<uint32_t, 3>{1024, 1024, 1024},
        .max_workgroup_count = std::array<uint32_t, 3>{65535, 65535, 65535},
        .max_push_constants_bytes = 128,
        .max_storage_buffers_per_stage = 65535,
        .timestamps = true,
        .subgroup_size = 32,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = true,
    },
    {
        .name = "intel-iris-xe",
        .device = "Intel Iris Xe Graphics (Tiger Lake GT2)",
        .driver = "Mesa ANV 26.1.3, Linux, Vulkan 1.4.348",
        .source = "vulkan.gpuinfo.org export "
                  "VP_GPUINFO_Intel_R__Iris_R__Xe_Graphics__TGL_GT2__26_1_3_void_unknown: "
                  "https://github.com/KhronosGroup/Vulkan-Profiles/blob/"
                  "910ea35629aa7ca7cb96335877e1abf253df704e/profiles/LunarG/"
                  "VP_LUNARG_desktop_baseline_2026/"
                  "vp_gpuinfo_intel_r__iris_r__xe_graphics__tgl_gt2__26_1_3_void_unknown.json",
        .notes = "memory heaps not in the export (unclamped); the driver varies the subgroup size "
                 "from 8 to 32",
        .max_storage_buffer_range = kU32Max,
        .max_memory_allocation_size = 12409119744,
        .min_storage_buffer_offset_alignment = 4,
        .max_texel_buffer_elements = 134217728,
        .min_texel_buffer_offset_alignment = 16,
        .max_shared_memory_bytes = 49152,
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = std::array<uint32_t, 3>{1024, 1024, 1024},
        .max_workgroup_count = std::array<uint32_t, 3>{2147483647, 65535, 65535},
        .max_push_constants_bytes = 256,
        .max_storage_buffers_per_stage = 201326592,
        .timestamps = true,
        .subgroup_size = 32,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = true,
    },
    {
        .name = "nvidia-rtx-4070",
        .device = "NVIDIA GeForce RTX 4070",
        .driver = "NVIDIA 551.61, Windows 11, Vulkan 1.3.277",
        .source =
            "vulkan.gpuinfo.org export VP_GPUINFO_NVIDIA_GeForce_RTX_4070_551_61_0_0_windows_11: "
            "https://github.com/KhronosGroup/Vulkan-Profiles/blob/"
            "910ea35629aa7ca7cb96335877e1abf253df704e/profiles/LunarG/"
            "VP_LUNARG_desktop_baseline_2024/"
            "vp_gpuinfo_nvidia_geforce_rtx_4070_551_61_0_0_windows_11.json",
        .notes = "memory heaps not in the export (unclamped)",
        .max_storage_buffer_range = kU32Max,
        .max_memory_allocation_size = 4292870144,
        .min_storage_buffer_offset_alignment = 16,
        .max_texel_buffer_elements = 134217728,
        .min_texel_buffer_offset_alignment = 16,
        .max_shared_memory_bytes = 49152,
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = std::array<uint32_t, 3>{1024, 1024, 64},
        .max_workgroup_count = std::array<uint32_t, 3>{2147483647, 65535, 65535},
        .max_push_constants_bytes = 256,
        .max_storage_buffers_per_stage = 1048576,
        .timestamps = true,
        .subgroup_size = 32,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = true,
        .push_descriptors = true,
        .memory_budget = true,
    },
    // Rows from Mesa's open drivers, read from their source: for these drivers every limit below is
    // a constant (or a per-GPU table entry) in the code, so the source states what the driver
    // reports on that GPU. Each URL pins the commit of the file read.
    {
        .name = "radeon-680m-radv",
        .device = "AMD Radeon 680M (Rembrandt) and the other RDNA2 (GFX10.3) APUs, Steam Deck's "
                  "Van Gogh included: RADV reports the same limits on all of them",
        .driver = "Mesa RADV, Linux (main branch at the commits cited; the files give no release)",
        .source = "Mesa RADV source: radv_get_physical_device_properties() in "
                  "https://github.com/mirror/mesa/blob/02d2c6a3fcf2a8ff5765ea646b9c7d46a23616b3/"
                  "src/amd/vulkan/radv_physical_device.c (limits, features, extensions; "
                  "max_shared_size = 65536 from GFX7); the constants in "
                  "https://github.com/mirror/mesa/blob/385cb7a295ab3c1c7be63134e51fd1dc8a371fdc/"
                  "src/amd/vulkan/radv_constants.h; has_packed_math_16bit (shaderFloat16) from "
                  "GFX9 in https://github.com/mirror/mesa/blob/"
                  "97b024e7f113572644e88fba3bd710327f2107e9/src/amd/common/ac_gpu_info.c",
        .notes = "driver source, not a device report: memory heaps (sized from the machine's RAM) "
                 "and maxPerStageDescriptorStorageBuffers (computed from descriptor sizes) "
                 "unclamped; compute subgroups are 64 wide, 32 on request "
                 "(VK_EXT_subgroup_size_control); cooperative matrices need GFX11",
        .max_storage_buffer_range = kU32Max,
        .max_memory_allocation_size = 4294967292,  // RADV_MAX_MEMORY_ALLOCATION_SIZE 0xFFFFFFFC
        .min_storage_buffer_offset_alignment = 4,
        .max_texel_buffer_elements = kU32Max,
        .min_texel_buffer_offset_alignment = 4,
        .max_shared_memory_bytes = 65536,
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = std::array<uint32_t, 3>{1024, 1024, 1024},
        .max_workgroup_count = std::array<uint32_t, 3>{65535, 65535, 65535},
        .max_push_constants_bytes = 256,
        .timestamps = true,
        .subgroup_size = 64,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = true,
    },
    {
        .name = "adreno-740-turnip",
        .device = "Qualcomm Adreno 740 (Snapdragon 8 Gen 2) on Mesa turnip",
        .driver =
            "Mesa turnip (freedreno Vulkan), main branch at the commits cited; the files give "
            "no release",
        .source = kTurnipSource,
        .notes = kTurnipNotes,
        .max_storage_buffer_range = 134217728,  // MAX_STORAGE_BUFFER_RANGE (1u << 27)
        .max_memory_allocation_size = kU32Max,
        .min_storage_buffer_offset_alignment = 4,
        .max_texel_buffer_elements = 134217728,  // MAX_TEXEL_ELEMENTS (1u << 27)
        .min_texel_buffer_offset_alignment = 64,
        .max_shared_memory_bytes = 32768,   // cs_shared_mem_size
        .max_workgroup_invocations = 2048,  // threadsize_base 64 * 2 (double) * max_waves 16
        .max_workgroup_size = std::array<uint32_t, 3>{1024, 1024, 1024},
        .max_workgroup_count = std::array<uint32_t, 3>{65535, 65535, 65535},
        .max_push_constants_bytes = 256,
        .timestamps = true,
        .subgroup_size = 128,  // threadsize_base 64, doubled (supports_double_threadsize)
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,  // has_getfiberid (a7xx_base)
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = true,
    },
    {
        .name = "adreno-650-turnip",
        .device = "Qualcomm Adreno 650 (Snapdragon 865) on Mesa turnip",
        .driver =
            "Mesa turnip (freedreno Vulkan), main branch at the commits cited; the files give "
            "no release",
        .source = kTurnipSource,
        .notes = kTurnipNotes,
        .max_storage_buffer_range = 134217728,
        .max_memory_allocation_size = kU32Max,
        .min_storage_buffer_offset_alignment = 4,
        .max_texel_buffer_elements = 134217728,
        .min_texel_buffer_offset_alignment = 64,
        .max_shared_memory_bytes = 32768,
        .max_workgroup_invocations = 2048,
        .max_workgroup_size = std::array<uint32_t, 3>{1024, 1024, 1024},
        .max_workgroup_count = std::array<uint32_t, 3>{65535, 65535, 65535},
        .max_push_constants_bytes = 256,
        .timestamps = true,
        .subgroup_size = 128,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = false,        // a6xx_gen3 has no has_getfiberid
        .storage_buffer_16bit = true,  // a6xx_gen3 storage_16bit
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = true,
    },
    {
        .name = "apple-m2-honeykrisp",
        .device = "Apple M2 (G14) on Mesa Honeykrisp (Asahi Linux); the driver's table has no "
                  "per-generation limit, so M1 (G13) reads the same",
        .driver = "Mesa Honeykrisp, Linux (main branch at the commits cited; the files give no "
                  "release)",
        .source = "Mesa Honeykrisp source: the properties, extension and feature tables in "
                  "https://github.com/mirror/mesa/blob/12a193605e44374bd63f4d452c957f3fc4ac4c6e/"
                  "src/asahi/vulkan/hk_physical_device.c; the HK_* constants in "
                  "https://github.com/bminor/mesa-mesa/blob/"
                  "12ab3abaacf44c098ad61710ffd2c0c8aa4ec465/src/asahi/vulkan/hk_private.h",
        .notes = "driver source, not a device report, and Honeykrisp's limits, not MoltenVK's: "
                 "maxTexelBufferElements (a compiler header not pinned here), "
                 "timestampComputeAndGraphics (asked of the kernel) and memory heaps unclamped",
        .max_storage_buffer_range = 2147483647,      // INT32_MAX
        .max_memory_allocation_size = 137438953472,  // 1ull << 37
        .min_storage_buffer_offset_alignment = 16,   // HK_MIN_SSBO_ALIGNMENT
        .min_texel_buffer_offset_alignment = 16,     // HK_MIN_TEXEL_BUFFER_ALIGNMENT
        .max_shared_memory_bytes = 32768,            // HK_MAX_SHARED_SIZE
        .max_workgroup_invocations = 1024,
        .max_workgroup_size = std::array<uint32_t, 3>{1024, 1024, 64},
        .max_workgroup_count = std::array<uint32_t, 3>{2147483647, 65535, 65535},
        .max_push_constants_bytes = 256,           // HK_MAX_PUSH_SIZE
        .max_storage_buffers_per_stage = 1048576,  // HK_MAX_DESCRIPTORS
        .subgroup_size = 32,
        .subgroup_arithmetic = true,
        .subgroup_ballot = true,
        .subgroup_vote = true,
        .subgroup_shuffle = true,
        .subgroup_quad = true,
        .storage_buffer_16bit = true,
        .shader_float16 = true,
        .buffer_device_address = true,
        .cooperative_matrix = false,
        .push_descriptors = true,
        .memory_budget = false,
    },
    {
        .name = "vulkan-minimum",
        .device = "the least a conformant Vulkan 1.1+ device may report",
        .driver = "(none: the specification's required limits)",
        .source =
            "Vulkan 1.3 specification, \"Limit Requirements\" table (maxMemoryAllocationSize: "
            "VkPhysicalDeviceMaintenance3Properties, at least 2^30); the same values as "
            "https://github.com/KhronosGroup/Vulkan-ValidationLayers/blob/"
            "9fe6278b5291a268c2369053ae62a6b32446172d/tests/device_profiles/min_core.json",
        .notes = "the specification sets no heap size (unclamped); every optional feature off",
        .max_storage_buffer_range = VulkanRequiredLimits::max_storage_buffer_range,
        .max_memory_allocation_size = VulkanRequiredLimits::max_memory_allocation_size,
        .min_storage_buffer_offset_alignment =
            VulkanRequiredLimits::max_storage_buffer_offset_alignment,
        .max_texel_buffer_elements = VulkanRequiredLimits::max_texel_buffer_elements,
        .min_texel_buffer_offset_alignment =
            VulkanRequiredLimits::max_texel_buffer_offset_alignment,
        .max_shared_memory_bytes = VulkanRequiredLimits::max_shared_memory_bytes,
        .max_workgroup_invocations = VulkanRequiredLimits::max_workgroup_invocations,
        .max_workgroup_size = VulkanRequiredLimits::max_workgroup_size,
        .max_workgroup_count = VulkanRequiredLimits::max_workgroup_count,
        .max_push_constants_bytes = VulkanRequiredLimits::max_push_constants_bytes,
        .max_storage_buffers_per_stage = VulkanRequiredLimits::max_storage_buffers_per_stage,
        .timestamps = false,
        .subgroup_size = VulkanRequiredLimits::subgroup_size,
        .subgroup_arithmetic = false,
        .subgroup_ballot = false,
        .subgroup_vote = false,
        .subgroup_shuffle = false,
        .subgroup_quad = false,
        .storage_buffer_16bit = false,
        .shader_float16 = false,
        .buffer_device_address = false,
        .cooperative_matrix = false,
        .push_descriptors = false,
        .memory_budget = false,
    },
};
}  // namespace

std::span<const DeviceProfile> device_profiles() {
  return kProfiles;
}

}  // namespace remat
